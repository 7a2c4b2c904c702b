extension Duration {
    /// The duration as a message says it: to the tenth of a second from one second on ("1.5
    /// seconds", "2.0 seconds"), to the millisecond below ("0.7 seconds", "0.025 seconds"). A
    /// budget that is what is left of another (1.499 s) reads as its round figure, never with the
    /// nine digits of `description`.
    package var messageText: String {
        let microseconds = components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
        let milliseconds = (microseconds + 500) / 1000
        let step: Int64 = milliseconds >= 1000 ? 100 : 1
        return Duration.milliseconds((milliseconds + step / 2) / step * step).description
    }
}
