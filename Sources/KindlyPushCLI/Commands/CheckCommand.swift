package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push check`: is this push Kindly's, and was it decrypted already?
package struct CheckCommand: RunnableCommand, DocumentCommand, DocumentProcessor {
    package static let name = "check"
    package static let abstract = "Tell whether a push is Kindly's and whether it is marked decrypted."
    package static let examples = [
        Example("Tell whether a push is Kindly's", "kindly-push check < push.json")
    ]
    package static let arguments = ["[<file> ...]"]
    package static let discussion = """
        Reads an APNs JSON document on standard input and prints {"kindly": BOOL, "decrypted": BOOL}.
        Exits 0 when the push is Kindly's and 1 when it is not.
        """
    package static let streamOptions = OptionGroup(StreamOptions.options)
    package static let help = SharedOptions.help.taken

    package let stream: StreamOptions

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        stream = try StreamOptions(arguments, command: Self.name)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        let isKindly = KindlyPushDecryption.isKindlyNotification(document)
        let result: JSONValue = [
            "kindly": .bool(isKindly),
            "decrypted": .bool(KindlyPushDecryption.isDecrypted(userInfo: document)),
        ]
        JSONWriter.write(result, to: &output)
        return isKindly ? .success : .notKindly
    }
}
