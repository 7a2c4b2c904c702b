import FuzzSupport

runFuzzer { data, size in
    DecryptTarget.check(fuzzInput(data, size))
    return 0
}
