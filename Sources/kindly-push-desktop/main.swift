internal import KindlyPushCLI
internal import KindlyPushCLIDesktop

// `kindly-push-desktop`: the commands of `kindly-push` with the services that need libsecret,
// GIO and SQLite (the Secret Service keyring, notify, doctor). `kindly-push` runs it when a
// command needs them; it can be run directly too.
kindlyPushMain(.desktop)
