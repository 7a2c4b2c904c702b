internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushSend

/// `send --redis`: `send` as a ``DocumentCommand`` whose processor is the library's
/// `PushSendProcessor`, so that the Redis Streams worker runs it as it runs `seal` or `decrypt`.
/// `send` makes it itself (SendCommand+Run.swift): it is no command of a table.
struct SendWorkerCommand: DocumentCommand {
    static var name: String { SendCommand.name }

    let processor: PushSendProcessor
    let stream: StreamOptions

    init(gateway: PushGateway, deadLetters: Bool) {
        processor = PushSendProcessor(gateway: gateway, deadLetters: deadLetters, metrics: gateway.senders.first?.metrics)
        // One entry at a time on this thread: the gateway's connections are this thread's.
        stream = StreamOptions(isLineMode: true, jobs: 1, services: CommandTable.kindlyPush.services)
    }
}
