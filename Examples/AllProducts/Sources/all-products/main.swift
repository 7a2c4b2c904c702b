// Uses one type of each product, so that each is compiled and linked; run, it touches no bus.
import KindlyPush
import KindlyPushDesktop
import KindlyPushSecretService
import KindlyPushTesting

let keyring = SecretServiceKeyring(busAddress: "unix:path=/nonexistent")
let deduplicator = InMemoryDeduplicator()
let clock = ManualClock()
print("KindlyPush \(KindlyPushRelease.version): \(type(of: keyring)), \(type(of: deduplicator)), \(type(of: clock))")
