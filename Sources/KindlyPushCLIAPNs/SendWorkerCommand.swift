internal import KindlyPushAPNs
internal import KindlyPushBase
internal import KindlyPushCLI

/// `send --redis`: `send` as a ``DocumentCommand`` whose processor is the library's
/// `APNsSendProcessor`, so that the Redis Streams worker runs it as it runs `seal` or `decrypt`.
struct SendWorkerCommand: DocumentCommand {
    static let name = SendCommand.name
    static let abstract = SendCommand.abstract
    static let options = SendCommand.options

    let processor: APNsSendProcessor
    let stream: StreamOptions

    init(gateway: APNsGateway, deadLetters: Bool) {
        processor = APNsSendProcessor(gateway: gateway, deadLetters: deadLetters, metrics: gateway.senders.first?.metrics)
        // One entry at a time: the sender is one HTTP/2 connection, used from this thread only.
        stream = StreamOptions(isLineMode: true, jobs: 1, services: CommandTable.kindlyPush.services)
    }

    /// Never called: `send` makes this command itself (``APNsSendServices``).
    init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        throw CodedError(.io, "'send --redis' runs in \(SiblingBinary.send.name)")
    }
}
