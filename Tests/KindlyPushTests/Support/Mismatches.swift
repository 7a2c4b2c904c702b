import Testing

/// The cases of an exhaustive loop that did not hold: each one noted, and one expectation at
/// the end that fails with their count and the first ones. An `#expect` per case (hundreds of
/// thousands of them: every byte value at every place) costs more than the case itself, most of
/// all under AddressSanitizer; a loop that notes its cases here checks the same and fails the
/// same, at a fraction of the suite's time.
struct Mismatches {
    /// How many cases did not hold.
    private(set) var count = 0
    /// The first cases that did not hold, by their notes.
    private(set) var first: [String] = []

    /// Notes the case `note` when `holds` is false (the note is made only then).
    mutating func check(_ holds: Bool, _ note: @autoclosure () -> String) {
        guard !holds else { return }
        count += 1
        if first.count < 10 { first.append(note()) }
    }

    /// The one expectation: no case failed.
    func expectNone(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(count == 0, "\(count) cases failed; the first: \(first)", sourceLocation: sourceLocation)
    }
}
