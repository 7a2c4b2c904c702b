internal import KindlyPushAPNs
internal import KindlyPushBase
internal import KindlyPushCLI

/// `send --redis`: `send` as a ``DocumentCommand`` whose processor is the library's
/// `APNsSendProcessor`, so that the Redis Streams worker runs it as it runs `seal` or `decrypt`.
/// `send` makes it itself (``APNsSendServices``): it is no command of a table.
struct SendWorkerCommand: DocumentCommand {
    static var name: String { SendCommand.name }

    let processor: APNsSendProcessor
    let stream: StreamOptions

    init(gateway: APNsGateway, deadLetters: Bool) {
        processor = APNsSendProcessor(gateway: gateway, deadLetters: deadLetters, metrics: gateway.senders.first?.metrics)
        // One entry at a time on this thread: the gateway's connections are this thread's.
        stream = StreamOptions(isLineMode: true, jobs: 1, services: CommandTable.kindlyPush.services)
    }
}
