import Foundation
import KindlyPushCore
import Testing

/// Which resolved addresses a client that connects where its input says may reach: the
/// special-purpose ranges of RFC 6890's registries refused, global ones kept.
@Suite("Global and non-global internet addresses", .offThePool)
struct InternetAddressTests {
    /// `text` as the `sockaddr` bytes getaddrinfo would give.
    static func address(_ text: String) throws -> [UInt8] {
        if text.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            try #require(inet_pton(AF_INET6, text, &address.sin6_addr) == 1, "\(text)")
            return withUnsafeBytes(of: &address) { Array($0) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        try #require(inet_pton(AF_INET, text, &address.sin_addr) == 1, "\(text)")
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    @Test(
        "loopback, private, shared, link-local, documentation, benchmarking, multicast and reserved addresses are not global, nor IPv4 ones inside IPv6",
        arguments: [
            "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.1.2.3",
            "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1",
            "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
            "255.255.255.255",
            "::", "::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "64:ff9b::a00:1",
            "2002:7f00:1::", "2002:c0a8:101::1", "100::1", "2001:db8::1", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1",
            "fec0::1", "ff02::1",
        ])
    func notGlobal(_ text: String) throws {
        #expect(!InternetAddress.isGlobal(try Self.address(text)))
    }

    @Test(
        "addresses just outside those ranges, and public ones, are global",
        arguments: [
            "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0",
            "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.167.255.255", "192.169.0.0",
            "198.17.255.255", "198.20.0.0", "223.255.255.255", "142.250.74.110",
            "2001:4860:4860::8888", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:db9::1",
            "fbff::1", "fe00::1",
        ])
    func global(_ text: String) throws {
        #expect(InternetAddress.isGlobal(try Self.address(text)))
    }

    @Test("an address is written as inet_ntop writes it; a family that is neither IPv4 nor IPv6 is not global")
    func text() throws {
        #expect(InternetAddress.text(try Self.address("10.0.0.7")) == "10.0.0.7")
        #expect(InternetAddress.text(try Self.address("fd12:3456::1")) == "fd12:3456::1")
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        let bytes = withUnsafeBytes(of: &unix) { Array($0) }
        #expect(!InternetAddress.isGlobal(bytes))
        #expect(!InternetAddress.isGlobal([]))
    }
}
