package import KindlyPushCLI

/// The `--redis` of the commands that read or move a worker group's entries for an operator
/// (`redis-status`, `dead-letter`): the server as a worker takes it (every URL form, sentinels
/// included, and its password), without a worker's own options.
package enum RedisServerOptions {
    package static let url = Option<String>(
        "--redis", "URL",
        "The server: redis://[USER@]HOST[:PORT][/DB], rediss://… (TLS), unix://[USER@]/PATH or redis+sentinel://… (as a worker takes it).")
}
