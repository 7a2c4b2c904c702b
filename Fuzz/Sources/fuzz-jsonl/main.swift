import FuzzSupport

runFuzzer { data, size in
    JSONLinesTarget.check(fuzzInput(data, size))
    return 0
}
