internal import KindlyPushCLI
internal import KindlyPushCLIRedis
internal import KindlyPushCLISend

// `kindly-push-send`: the commands of `kindly-push` with `send`, the only one that needs nghttp2
// and libcrypto (APNs over HTTP/2, the ES256 provider token). `kindly-push send` runs it; it can
// be run directly too. With --redis it is a send worker (hiredis, as kindly-push-redis).
kindlyPushMain(.send(workers: RedisWorkerServices()))
