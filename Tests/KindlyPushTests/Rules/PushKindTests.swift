import KindlyPush
import KindlyPushCore
import Testing

@Suite("Reading a push's kind", .offThePool)
struct PushKindTests {
    struct Case: Sendable, CustomStringConvertible {
        let description: String
        let json: String
        let kind: PushKind
    }

    // display-rules.md, Inputs; wire format section 3: an alert counts when it is a string or
    // an object; mutable-content only as the JSON number 1.
    static let cases: [Case] = [
        Case(
            description: "an object alert with mutable-content 1 is visible", json: #"{"aps":{"alert":{"title":"t"},"mutable-content":1}}"#,
            kind: .visible),
        Case(
            description: "a string alert with mutable-content 1 is visible", json: #"{"aps":{"alert":"hi","mutable-content":1}}"#,
            kind: .visible),
        Case(description: "mutable-content 1.0 counts as 1", json: #"{"aps":{"alert":"hi","mutable-content":1.0}}"#, kind: .visible),
        Case(description: "mutable-content 1e0 counts as 1", json: #"{"aps":{"alert":"hi","mutable-content":1e0}}"#, kind: .visible),
        Case(description: "mutable-content 10e-1 counts as 1", json: #"{"aps":{"alert":"hi","mutable-content":10e-1}}"#, kind: .visible),
        Case(description: "an alert without mutable-content is plain", json: #"{"aps":{"alert":"hi","sound":"default"}}"#, kind: .plain),
        Case(description: "mutable-content true is not 1", json: #"{"aps":{"alert":"hi","mutable-content":true}}"#, kind: .plain),
        Case(description: "mutable-content \"1\" is not 1", json: #"{"aps":{"alert":"hi","mutable-content":"1"}}"#, kind: .plain),
        Case(description: "mutable-content 0 is not 1", json: #"{"aps":{"alert":"hi","mutable-content":0}}"#, kind: .plain),
        Case(description: "mutable-content 2 is not 1", json: #"{"aps":{"alert":"hi","mutable-content":2}}"#, kind: .plain),
        Case(description: "mutable-content 1.5 is not 1", json: #"{"aps":{"alert":"hi","mutable-content":1.5}}"#, kind: .plain),
        Case(description: "an empty object alert is still an alert", json: #"{"aps":{"alert":{}}}"#, kind: .plain),
        Case(description: "no alert is silent", json: #"{"aps":{"content-available":1}}"#, kind: .silent),
        Case(description: "mutable-content without an alert is silent", json: #"{"aps":{"mutable-content":1}}"#, kind: .silent),
        Case(description: "a null alert is not an alert", json: #"{"aps":{"alert":null,"mutable-content":1}}"#, kind: .silent),
        Case(description: "an array alert is not an alert", json: #"{"aps":{"alert":["a"],"mutable-content":1}}"#, kind: .silent),
        Case(description: "a number alert is not an alert", json: #"{"aps":{"alert":1,"mutable-content":1}}"#, kind: .silent),
        Case(description: "no aps is silent", json: #"{"kindly":{}}"#, kind: .silent),
        Case(description: "an aps that is not an object is silent", json: #"{"aps":"alert"}"#, kind: .silent),
        Case(description: "an alert outside aps does not count", json: #"{"alert":"hi","mutable-content":1}"#, kind: .silent),
        Case(description: "a document that is not an object is silent", json: #"["aps"]"#, kind: .silent),
    ]

    @Test("The kind is read from aps as the spec says", arguments: cases)
    func kind(_ testCase: Case) throws {
        #expect(PushKind(userInfo: try JSONValue(parsing: testCase.json)) == testCase.kind)
    }

    @Test("content-available counts only as the JSON number 1")
    func contentAvailable() throws {
        #expect(PushKind.hasContentAvailable(userInfo: try JSONValue(parsing: #"{"aps":{"content-available":1}}"#)))
        #expect(PushKind.hasContentAvailable(userInfo: try JSONValue(parsing: #"{"aps":{"content-available":1.0}}"#)))
        #expect(!PushKind.hasContentAvailable(userInfo: try JSONValue(parsing: #"{"aps":{"content-available":true}}"#)))
        #expect(!PushKind.hasContentAvailable(userInfo: try JSONValue(parsing: #"{"aps":{"content-available":"1"}}"#)))
        #expect(!PushKind.hasContentAvailable(userInfo: try JSONValue(parsing: #"{"aps":{}}"#)))
    }

    @Test("The raw values are the spec's words")
    func rawValues() {
        #expect(PushKind.allCases.map(\.rawValue) == ["visible", "plain", "silent"])
        #expect(DisplayRules.AppState.allCases.map(\.rawValue) == ["killed", "background", "foreground"])
        #expect(DisplayRules.Screen.allCases.map(\.rawValue) == ["chat", "other"])
        #expect(DisplayRules.DelegateAnswer.allCases.map(\.rawValue) == ["allow", "suppress"])
        #expect(DisplayRules.Presentation.allCases.map(\.rawValue) == ["banner", "placeholder", "none", "passthrough"])
        #expect(DisplayRules.Presenter.allCases.map(\.rawValue) == ["extension", "sdk", "system", "none"])
    }
}
