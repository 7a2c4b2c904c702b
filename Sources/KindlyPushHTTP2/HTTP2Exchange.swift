/// Why an exchange ended without an answer.
package enum HTTP2Failure: Error, Sendable, Equatable {
    /// The server's TLS handshake chose no `h2` (ALPN): nothing was sent to it, and no other
    /// attempt will change the server's protocols.
    case noHTTP2
    /// No answer, for the reason given: the connection failed or was lost, went away (a GOAWAY
    /// past the stream), the stream was reset or refused, or the request timed out. Another
    /// attempt, on another connection, may be answered.
    case transport(String)
    /// The host resolves only to addresses the client may not connect to
    /// (``HTTP2Client/Configuration/globalAddressesOnly``): nothing was sent, and no other
    /// attempt will change that.
    case refusedAddress(String)
}

/// One request of an ``HTTP2Client`` and what came back: made by the client's user, handed to
/// ``HTTP2Client/submit(_:headers:)``, and given back by ``HTTP2Client/takeFinished(into:)``
/// once it is answered or has failed. An exchange is used for one request only.
package final class HTTP2Exchange {
    /// What the user keeps with the request (the push it carries); the client never reads it.
    package let owner: AnyObject?
    /// The answer's `:status`; 0 until it came.
    package internal(set) var status = 0
    /// The answer's body, up to the client's ``HTTP2Client/Configuration/maximumBodySize``
    /// (the rest is dropped).
    package internal(set) var body: [UInt8] = []
    /// The values of the answer's watched headers
    /// (``HTTP2Client/Configuration/watchedHeaders``), each with the index of its name there.
    package internal(set) var headers: [(index: Int, value: [UInt8])] = []
    /// Why it ended without an answer; nil when it was answered.
    package internal(set) var failure: HTTP2Failure?
    /// The number of the connection that carried it (the client counts them from 1).
    package internal(set) var connection = 0

    /// The request's body, sent from ``bodyOffset`` on.
    let requestBody: [UInt8]
    var bodyOffset = 0
    /// When the request times out (monotonic milliseconds).
    var deadline = 0
    /// Its stream on its connection.
    var streamID: Int32 = 0
    /// The answer ended (END_STREAM) and the stream is done.
    var ended = false
    /// Answered or failed: the client is done with it.
    package internal(set) var finished = false

    /// A request whose body is `body` (empty: none), kept with `owner`.
    package init(owner: AnyObject?, body: [UInt8]) {
        self.owner = owner
        requestBody = body
    }
}

/// A request's header fields, pseudo-header fields first (`:method`, `:scheme`, `:authority`,
/// `:path`), kept in one buffer that is emptied and filled again for each request, so that
/// building a request allocates nothing once the buffer has grown.
package struct HTTP2Headers {
    struct Field {
        var name: Int
        var nameLength: Int
        var value: Int
        var valueLength: Int
        /// Never put in HPACK's dynamic table (a value that changes with each request).
        var changes: Bool
    }

    var bytes: [UInt8] = []
    var fields: [Field] = []

    package init() {}

    /// The number of fields.
    package var count: Int { fields.count }

    /// Empties the list, keeping its buffers.
    package mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// Appends every field of `other`.
    package mutating func append(contentsOf other: HTTP2Headers) {
        let base = bytes.count
        bytes.append(contentsOf: other.bytes)
        for field in other.fields {
            fields.append(
                Field(
                    name: base + field.name, nameLength: field.nameLength, value: base + field.value, valueLength: field.valueLength,
                    changes: field.changes))
        }
    }

    /// Appends the field `name: value`; `changes` for a value that differs from one request to
    /// the next (kept out of HPACK's table, where it would push out the ones that repeat).
    package mutating func append(_ name: String, _ value: String, changes: Bool = false) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8)
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        fields.append(
            Field(
                name: nameStart, nameLength: valueStart - nameStart, value: valueStart, valueLength: bytes.count - valueStart,
                changes: changes))
    }

    /// Appends the field `name: PREFIX VALUE` (a path: `/3/device/` and the token).
    package mutating func append(_ name: String, _ prefix: String, _ value: String, changes: Bool = false) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8)
        let valueStart = bytes.count
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(contentsOf: value.utf8)
        fields.append(
            Field(
                name: nameStart, nameLength: valueStart - nameStart, value: valueStart, valueLength: bytes.count - valueStart,
                changes: changes))
    }

    /// Appends the field `name: NUMBER` (decimal digits).
    package mutating func append(_ name: String, decimal number: Int, changes: Bool = false) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8)
        let valueStart = bytes.count
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        let digitsStart = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[digitsStart...].reverse()
        fields.append(
            Field(
                name: nameStart, nameLength: valueStart - nameStart, value: valueStart, valueLength: bytes.count - valueStart,
                changes: changes))
    }
}
