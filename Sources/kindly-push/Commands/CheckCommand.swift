internal import KindlyPush
internal import KindlyPushCore

/// `kindly-push check`: is this push Kindly's, and was it decrypted already?
struct CheckCommand: DocumentCommand {
    static let name = "check"
    static let abstract = "Tell whether a push is Kindly's and whether it is marked decrypted."
    static let arguments = ["[<file> ...]"]
    static let discussion = """
        Reads an APNs JSON document on standard input and prints {"kindly": BOOL, "decrypted": BOOL}.
        Exits 0 when the push is Kindly's and 1 when it is not.
        """
    static let options: [OptionSpec] = SharedOptions.stream + [SharedOptions.help]

    let stream: StreamOptions

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) {
        stream = try StreamOptions(arguments, command: Self.name)
    }

    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion {
        let isKindly = KindlyPushDecryption.isKindlyNotification(document)
        let result: JSONValue = [
            "kindly": .bool(isKindly),
            "decrypted": .bool(KindlyPushDecryption.isDecrypted(userInfo: document)),
        ]
        JSONWriter.write(result, to: &output)
        return isKindly ? .success : .notKindly
    }
}
