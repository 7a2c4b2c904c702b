internal import KindlyPush
internal import KindlyPushBase
internal import KindlyPushDesktop

/// `notify`'s processor on the library's line engine: a push in, the desktop presenter's plan
/// out (the handler's decision in its state now, and what to post), or the error that is the
/// push's outcome. A push that is not Kindly's, with no `--passthrough`, is `not_kindly` (exit 1,
/// or with `--jsonl` one line on standard error). The sink is ``NotifySession/Sink``: the
/// notification server and the state store.
struct NotifyDecision: DecisionProcessor {
    let presenter: DesktopPresenter

    func decide(_ document: JSONValue) throws(CodedError) -> DesktopPresenter.Plan {
        let plan = presenter.plan(userInfo: document)
        if plan.outcomeWithoutNotifier == .notKindly {
            throw CodedError(.decryption(.notKindly), "the push is not Kindly's; the host shows it (or use --passthrough)")
        }
        return plan
    }
}
