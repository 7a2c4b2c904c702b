import FuzzSupport

runFuzzer { data, size in
    Base64Target.check(fuzzInput(data, size))
    return 0
}
