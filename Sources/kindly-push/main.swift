internal import KindlyPushCLI

// `kindly-push`: links neither Foundation nor libsecret, GIO or SQLite, so that a one-shot run
// starts fast; what needs them runs in `kindly-push-desktop` (see DesktopServices).
kindlyPushMain()
