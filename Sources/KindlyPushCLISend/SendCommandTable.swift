package import KindlyPushCLI

extension CommandTable {
    /// `kindly-push-send`'s: `kindly-push`'s with `send` and `vapid-keygen` declared and run
    /// here, on nghttp2, OpenSSL and libcrypto, and `--redis` workers on `workers` (hiredis);
    /// the Secret Service, `notify` and `doctor` still run in `kindly-push-desktop`.
    package static func send(workers: any RedisServices) -> CommandTable {
        kindlyPush.linking(
            .send, services: Services(redis: workers), running: [.runs(SendCommand.self), .runs(VAPIDKeygenCommand.self)],
            handOffs: [.desktopKeyring])
    }
}
