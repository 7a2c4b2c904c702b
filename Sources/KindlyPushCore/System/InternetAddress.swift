#if canImport(Glibc)
    import Glibc
#endif

/// What a resolved address (`sockaddr` bytes, as getaddrinfo gives them) is, for a client that
/// connects where its input says: a push service on the internet has a global address, never a
/// loopback, private, link-local or reserved one. The ranges are Synapse's default
/// `ip_range_blacklist` (which guards its own outgoing pushes the same way), with the
/// unspecified, "this network" and reserved ranges added, and an IPv4 address carried inside an
/// IPv6 one (IPv4-mapped, NAT64, 6to4) judged as that IPv4 address.
package enum InternetAddress {
    /// Whether `address` (a `sockaddr_in` or `sockaddr_in6`) is global; any other family is not.
    package static func isGlobal(_ address: [UInt8]) -> Bool {
        switch family(address) {
        case Int32(AF_INET) where address.count >= 8:
            return isGlobal(ipv4: Array(address[4..<8]))
        case Int32(AF_INET6) where address.count >= 24:
            return isGlobal(ipv6: Array(address[8..<24]))
        default:
            return false
        }
    }

    /// The address as text (`inet_ntop`), for messages.
    package static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = family(address)
        let offset = family == Int32(AF_INET) ? 4 : 8
        guard family == Int32(AF_INET) || family == Int32(AF_INET6), address.count >= offset + (family == Int32(AF_INET) ? 4 : 16),
            address.withUnsafeBytes({ inet_ntop(family, $0.baseAddress! + offset, &buffer, socklen_t(buffer.count)) }) != nil
        else { return "an address of family \(family)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func family(_ address: [UInt8]) -> Int32 {
        guard address.count >= MemoryLayout<sa_family_t>.size else { return -1 }
        return address.withUnsafeBytes { Int32($0.loadUnaligned(as: sa_family_t.self)) }
    }

    /// IPv4 ranges that are not global: (first bytes, prefix length).
    private static let ipv4Refused: [(network: [UInt8], bits: Int)] = [
        ([0, 0, 0, 0], 8),  // "this network", 0.0.0.0 included
        ([10, 0, 0, 0], 8),  // private (RFC 1918)
        ([100, 64, 0, 0], 10),  // shared address space (carrier-grade NAT)
        ([127, 0, 0, 0], 8),  // loopback
        ([169, 254, 0, 0], 16),  // link-local (cloud metadata services among them)
        ([172, 16, 0, 0], 12),  // private
        ([192, 0, 0, 0], 24),  // IETF protocol assignments
        ([192, 0, 2, 0], 24),  // documentation
        ([192, 88, 99, 0], 24),  // 6to4 relay anycast
        ([192, 168, 0, 0], 16),  // private
        ([198, 18, 0, 0], 15),  // benchmarking
        ([198, 51, 100, 0], 24),  // documentation
        ([203, 0, 113, 0], 24),  // documentation
        ([224, 0, 0, 0], 4),  // multicast
        ([240, 0, 0, 0], 4),  // reserved, the broadcast address included
    ]

    /// IPv6 ranges that are not global, besides those that carry an IPv4 address.
    private static let ipv6Refused: [(network: [UInt8], bits: Int)] = [
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 96),  // unspecified, loopback, IPv4-compatible
        ([0x01, 0x00, 0, 0, 0, 0, 0, 0], 64),  // discard-only
        ([0x20, 0x01, 0x0d, 0xb8], 32),  // documentation
        ([0xfc], 7),  // unique local
        ([0xfe, 0x80], 10),  // link-local
        ([0xfe, 0xc0], 10),  // site-local (deprecated)
        ([0xff], 8),  // multicast
    ]

    static func isGlobal(ipv4 bytes: [UInt8]) -> Bool {
        !ipv4Refused.contains { within(bytes, $0.network, bits: $0.bits) }
    }

    static func isGlobal(ipv6 bytes: [UInt8]) -> Bool {
        // An IPv4 address inside: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16).
        if within(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], bits: 96) { return isGlobal(ipv4: Array(bytes[12..<16])) }
        if within(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], bits: 96) { return isGlobal(ipv4: Array(bytes[12..<16])) }
        if within(bytes, [0x20, 0x02], bits: 16) { return isGlobal(ipv4: Array(bytes[2..<6])) }
        return !ipv6Refused.contains { within(bytes, $0.network, bits: $0.bits) }
    }

    /// Whether the first `bits` bits of `bytes` are `network`'s (zero past its bytes).
    private static func within(_ bytes: [UInt8], _ network: [UInt8], bits: Int) -> Bool {
        for index in 0..<(bits + 7) / 8 {
            let mask: UInt8 = bits - index * 8 >= 8 ? 0xff : ~(0xff >> (bits - index * 8))
            let expected = index < network.count ? network[index] : 0
            guard bytes[index] & mask == expected & mask else { return false }
        }
        return true
    }
}
