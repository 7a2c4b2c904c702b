internal import KindlyPushCLI

// `kindly-push`: links neither Foundation nor libsecret, GIO or SQLite, nor hiredis or nghttp2,
// so that a one-shot run starts fast; what needs them runs in a sibling (see CommandTable).
kindlyPushMain(.kindlyPush)
