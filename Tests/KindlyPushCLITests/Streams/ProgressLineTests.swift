import KindlyPushCLI
import Testing

@Suite("The progress line's text", .offThePool)
struct ProgressLineTests {
    @Test(
        "count, rate and elapsed time; with a known size, the share read and the time left",
        arguments: [
            (1200, 0.2, nil, "1200 lines, 6000/s, 0.2 s"),
            (1200, 0.2, 0.4, "1200 lines, 6000/s, 0.2 s, 40 %, 0.3 s left"),
            (10, 2.0, 0.005, "10 lines, 5/s, 2.0 s, 0 %"),  // too little read to say the time left
            (5000, 12.5, 1.0, "5000 lines, 400/s, 12.5 s, 100 %"),
            (0, 0.0, 0.0, "0 lines, 0/s, 0.0 s, 0 %"),
        ] as [(Int, Double, Double?, String)])
    func text(_ count: Int, _ seconds: Double, _ share: Double?, _ expected: String) {
        #expect(ProgressLine.text(count: count, noun: "lines", seconds: seconds, share: share) == expected)
    }
}
