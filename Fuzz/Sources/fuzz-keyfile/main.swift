import FuzzSupport

runFuzzer { data, size in
    KeyFileTarget.check(fuzzInput(data, size))
    return 0
}
