internal import KindlyPushCore

/// A JSON number, kept as the literal text it was written with.
///
/// Comparisons are exact on the decimal value (`1`, `1.0`, `1e0` and `10e-1` are equal),
/// with no rounding through `Double`, so that version checks and integer ranges are decided
/// the same way by every reader of the wire format.
public struct JSONNumber: Sendable {
    /// The number as written, a valid RFC 8259 number.
    public let literal: String

    /// A number from text the strict reader already validated.
    init(validatedLiteral: String) {
        self.literal = validatedLiteral
    }

    /// The number `value`.
    public init(_ value: Int) {
        self.literal = String(value)
    }

    /// A number from its JSON text; `nil` when `literal` is not a valid JSON number.
    public init?(literal: String) {
        var copy = literal
        let valid = copy.withUTF8 { bytes in JSONReader.numberLength(in: UnsafeRawBufferPointer(bytes), at: 0) == bytes.count }
        guard valid else { return nil }
        self.literal = literal
    }

    /// The exact decimal value: sign, significant digits without leading or trailing zeros
    /// (empty for zero), and the power of ten they are scaled by.
    struct Decimal: Equatable, Hashable {
        var isNegative: Bool
        var digits: [UInt8]
        var exponent: Int
    }

    var decimal: Decimal {
        let bytes = Array(literal.utf8)
        var index = 0
        var isNegative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            isNegative = true
            index += 1
        }
        var digits: [UInt8] = []
        var fractionLength = 0
        var inFraction = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte - UInt8(ascii: "0")) }
                if inFraction { fractionLength += 1 }
            } else {
                break
            }
            index += 1
        }
        var exponent = 0
        if index < bytes.count {  // 'e' or 'E'
            index += 1
            var exponentNegative = false
            if bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            // Saturate: an exponent of a billion is as good as infinity for every check here.
            let limit = 1_000_000_000
            while index < bytes.count {
                exponent = min(exponent * 10 + Int(bytes[index] - UInt8(ascii: "0")), limit)
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        exponent -= fractionLength
        while let last = digits.last, last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { return Decimal(isNegative: false, digits: [], exponent: 0) }
        return Decimal(isNegative: isNegative, digits: digits, exponent: exponent)
    }

    /// The value as an integer when it is a whole number within `range`, whatever its
    /// spelling (`15`, `15.0`, `1.5e1`); `nil` otherwise.
    public func integerValue(in range: ClosedRange<Int64>) -> Int64? {
        let value = decimal
        if value.digits.isEmpty { return range.contains(0) ? 0 : nil }
        guard value.exponent >= 0, value.digits.count + value.exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in value.digits + [UInt8](repeating: 0, count: value.exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
        }
        // A negative value may reach 2^63: Int64.min has no positive counterpart.
        guard magnitude <= UInt64(Int64.max) + (value.isNegative ? 1 : 0) else { return nil }
        let signed = value.isNegative ? Int64(bitPattern: 0 &- magnitude) : Int64(magnitude)
        return range.contains(signed) ? signed : nil
    }

    /// The nearest `Double` (for display and for callers that want one).
    public var doubleValue: Double { Double(literal) ?? .nan }
}

extension JSONNumber: Hashable {
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.literal == rhs.literal || lhs.decimal == rhs.decimal
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(decimal)
    }
}

extension JSONNumber: CustomStringConvertible {
    public var description: String { literal }
}
