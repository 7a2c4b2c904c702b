// Codable and Hashable for the display-rule values, with the spec's names (docs/spec/display-rules.md and
// docs/spec/streams.md "The output of route"), so that a decision can be logged as JSON or kept in a set.

extension PushKind: Codable {}
extension DisplayRules.AppState: Codable {}
extension DisplayRules.Screen: Codable {}
extension DisplayRules.DelegateAnswer: Codable {}
extension DisplayRules.Presentation: Codable {}
extension DisplayRules.Presenter: Codable {}

extension RouteDecision: Codable {
    enum CodingKeys: String, CodingKey {
        case isKindly = "kindly"
        case kind, presentation, presenter
        case delegateConsulted = "delegate_consulted"
        case chatId = "chat_id"
        case title, body, reason
    }

    /// Encodes exactly the object of docs/spec/streams.md "The output of route" (``json``): `chat_id`, `title` and
    /// `body` only for a banner, `reason` only when present.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// Decodes the object of docs/spec/streams.md "The output of route".
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            isKindly: try container.decode(Bool.self, forKey: .isKindly),
            kind: try container.decode(PushKind.self, forKey: .kind),
            presentation: try container.decode(DisplayRules.Presentation.self, forKey: .presentation),
            presenter: try container.decode(DisplayRules.Presenter.self, forKey: .presenter),
            delegateConsulted: try container.decode(Bool.self, forKey: .delegateConsulted),
            chatId: try container.decodeIfPresent(String.self, forKey: .chatId),
            title: try container.decodeIfPresent(String.self, forKey: .title),
            body: try container.decodeIfPresent(String.self, forKey: .body),
            reason: try container.decodeIfPresent(DecryptionFailure.Reason.self, forKey: .reason))
    }
}
