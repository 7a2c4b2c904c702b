// swift-log's declarations that the Logging article's adapter uses, as swift-log 1.x declares
// them (Sources/Logging/Logging.swift), with empty bodies: swift-log cannot be fetched on the build
// machines, so tools/doc-snippets type-checks that block against this stand-in. Nothing links it.

public struct Logger: Sendable {
    public enum Level: String, Codable, CaseIterable, Sendable {
        case trace, debug, info, notice, warning, error, critical
    }

    public struct Message: ExpressibleByStringLiteral, ExpressibleByStringInterpolation, Sendable {
        public init(stringLiteral value: String) {}
        public init(stringInterpolation: DefaultStringInterpolation) {}
    }

    public init(label: String) {}

    public func log(
        level: Logger.Level, _ message: @autoclosure () -> Logger.Message, source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {}
}
