import FuzzSupport

runFuzzer { data, size in
    JSONTarget.check(fuzzInput(data, size))
    return 0
}
