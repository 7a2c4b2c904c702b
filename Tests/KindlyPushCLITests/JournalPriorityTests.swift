import KindlyPushBase
import KindlyPushCLI
import Testing

/// The level a standard error line carries to the journal (its `<N>` prefix when
/// `JOURNAL_STREAM` names standard error: tools/worker-systemd-check runs that end to end).
@Suite("Standard error lines: the journal priority of each form", .offThePool)
struct JournalPriorityTests {
    @Test("`kindly-push: CODE: …` of every error code is an error, `kindly-push: warning: …` a warning, a note or anything else info")
    func levels() {
        for code in ErrorCode.allCases {
            #expect(Diagnostics.level(of: CodedError(code, "x").reportLine) == .error, "\(code.rawValue)")
            #expect(Diagnostics.level(of: CodedError(code, "x").reportLine(at: "line 3")) == .error, "\(code.rawValue)")
        }
        #expect(Diagnostics.level(of: "kindly-push: warning: the --redis URL carries a password") == .warning)
        for note in [
            "kindly-push: seal worker: reads 'in' on unix:///run/redis.sock", "kindly-push: notify: already shown; not shown again",
            "kindly-push: note: spread", "kindly-push: 3 result, 1 bad_input", "kindly-push: io", "kindly-push:", "plain text",
        ] {
            #expect(Diagnostics.level(of: note) == .info, "\(note)")
        }
    }
}
