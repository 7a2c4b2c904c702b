import KindlyPushCore
import Testing

@Suite("Durations in messages", .offThePool)
struct DurationTextTests {
    @Test(
        "a budget reads as its round figure: tenths from a second on, milliseconds below",
        arguments: [
            (Duration.milliseconds(1500), "1.5 seconds"), (.nanoseconds(1_499_302_915), "1.5 seconds"), (.seconds(2), "2.0 seconds"),
            (.milliseconds(700), "0.7 seconds"), (.nanoseconds(699_600_000), "0.7 seconds"), (.milliseconds(25), "0.025 seconds"),
            (.seconds(30), "30.0 seconds"),
        ])
    func messageText(_ duration: Duration, _ text: String) {
        #expect(duration.messageText == text)
    }
}
