internal import KindlyPushCLI
internal import KindlyPushCLIDesktop
internal import KindlyPushCLIRedis

// `kindly-push-redis`: the commands of `kindly-push` with the Redis Streams workers (hiredis) and
// the desktop services of `kindly-push-desktop` (so that a worker can use the Secret Service).
// `kindly-push` runs it when a command is given `--redis`; it can be run directly too.
kindlyPushMain(.redis(over: .desktop))
