internal import KindlyPush
internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop
internal import KindlyPushWebPush

/// The agent's UnifiedPush side (wire-format.md section 9.4): each `Message` a distributor calls
/// on the connector is decrypted with the device's Web Push keys (RFC 8291) and the Kindly
/// document in it handled exactly as a followed line; one that does not decrypt is dropped with
/// one line on standard error, its reason code first. Any peer on the session bus can call the
/// connector: a call for this device's registration is believed only from the current owner of
/// the registration's distributor name (a `Message` from anyone else is `untrusted_sender`, an
/// `Unregistered` or `NewEndpoint` is ignored), so that no other program of the session can show
/// a banner or end the registration.
extension NotifySession {
    /// The connector under `ai.kindly.Push`, or `nil` (with one warning) when the bus refused it:
    /// the agent then goes on with its other input.
    static func makeConnector(_ environment: CommandEnvironment) -> UnifiedPushConnector? {
        do throws(UnifiedPushConnector.Failure) {
            return try UnifiedPushConnector(busAddress: KeyringChoice.busAddress(environment), takingName: false)
        } catch {
            Diagnostics.line("kindly-push: warning: no UnifiedPush connector (\(error)); pushes come only from the followed input")
            return nil
        }
    }

    /// Handles what distributors called since the last time.
    func handleUnifiedPushCalls() {
        guard let connector else { return }
        for received in connector.takeCalls() {
            switch received.call {
            case .message(let token, let id, let body):
                receive(body, token: token, id: id, from: received, on: connector)
            case .newEndpoint(let token, let endpoint):
                guard let keys = unifiedPushKeys(), keys.token == token else { continue }
                guard connector.isFrom(keys.distributor, received) else {
                    ignore("NewEndpoint", from: received.sender, keys)
                    continue
                }
                Diagnostics.line(
                    "kindly-push: notify: UnifiedPush endpoint \(endpoint): if it changed, give it to the backend "
                        + "(kindly-push unifiedpush register prints the registration)")
            case .unregistered(let token):
                guard let keys = unifiedPushKeys(), keys.token == token,
                    let store = try? UnifiedPushStore.beside(command.decryption.keyring, environment: command.environment)
                else { continue }
                guard connector.isFrom(keys.distributor, received) else {
                    ignore("Unregistered", from: received.sender, keys)
                    continue
                }
                do throws(CodedError) {
                    try store.delete()
                    Diagnostics.line("kindly-push: notify: the distributor ended the UnifiedPush registration; its keys are forgotten")
                } catch {
                    Diagnostics.line("kindly-push: notify: the distributor ended the UnifiedPush registration; \(error.message)")
                }
            }
        }
    }

    /// The device's Web Push keys, read afresh (a registration may be newer than the agent).
    private func unifiedPushKeys() -> UnifiedPushKeys? {
        guard let store = try? UnifiedPushStore.beside(command.decryption.keyring, environment: command.environment) else { return nil }
        return try? store.read()
    }

    /// One line for a call about this device's registration from a peer that is not its distributor.
    private func ignore(_ method: String, from sender: String, _ keys: UnifiedPushKeys) {
        Diagnostics.line("kindly-push: notify: a UnifiedPush \(method) from \(sender), not from \(keys.distributor), is ignored")
    }

    private func drop(_ id: String, _ reason: DecryptionFailure.Reason, _ why: String) {
        Diagnostics.line("kindly-push: \(reason.code): UnifiedPush message \(id) dropped: \(why)")
    }

    /// One message: decrypted, then shown as a followed line is.
    private func receive(
        _ body: SecureBytes, token: String, id: String, from received: UnifiedPushConnector.Received, on connector: UnifiedPushConnector
    ) {
        guard let keys = unifiedPushKeys() else {
            drop(id, .keyUnavailable, "no UnifiedPush registration here (kindly-push unifiedpush register)")
            return
        }
        guard keys.token == token else {
            drop(id, .keyUnavailable, "its token is not this device's registration")
            return
        }
        guard connector.isFrom(keys.distributor, received) else {
            drop(id, .untrustedSender, "it came from \(received.sender), not from the registration's distributor \(keys.distributor)")
            return
        }
        let plaintext: SecureBytes
        do throws(WebPushError) {
            plaintext = try keys.decrypt(body)
        } catch {
            switch error {
            case .authentication: drop(id, .authenticationFailed, error.description)
            case .keys: drop(id, .keyUnavailable, error.description)
            default: drop(id, .malformed, error.description)
            }
            return
        }
        var bytes = plaintext.withUnsafeBytes { Array($0) }
        defer { bytes.wipeCapacity() }
        applyHostCalls()
        do throws(CodedError) {
            if !kept.isEmpty {
                keep(bytes, at: "UnifiedPush message \(id)", because: nil)
            } else {
                do throws(CodedError) {
                    // A message is one whole document, as notify reads one push without --jsonl.
                    try present(.text(bytes.indices), in: bytes, lines: false)
                } catch {
                    guard error.code == .io else { throw error }
                    keep(bytes, at: "UnifiedPush message \(id)", because: error)
                }
            }
        } catch {
            Diagnostics.line(error.reportLine(at: "UnifiedPush message \(id)"))
        }
    }
}
