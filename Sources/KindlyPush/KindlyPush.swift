// The module that services import: everything of `KindlyPushBase` (re-exported, so that one
// `import KindlyPush` is the whole API) and, in this module, what needs Foundation: the `Data`
// and `[AnyHashable: Any]` forms, `LocalizedError`, the iOS names that take Foundation types,
// and the notification service extension's base class.
//
// Why two modules: the `kindly-push` command links `KindlyPushBase` alone, so that a one-shot
// `decrypt` does not load Foundation and ICU (tools/bench-startup measures its start-up).
@_exported public import KindlyPushBase
