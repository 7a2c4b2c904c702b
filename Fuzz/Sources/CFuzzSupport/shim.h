// What the fuzz targets need from C: libFuzzer's driver entry point (compiler-rt's
// libclang_rt.fuzzer, linked by -sanitize=fuzzer), an in-memory file, and libsodium for
// the reference checks (Debian's libsodium-dev).
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sodium.h>

// Runs libFuzzer with UserCb as the test function (FuzzerInterface.h; compiler-rt 12 and later).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));

// memfd_create(2) through syscall(2): glibc declares it only under _GNU_SOURCE, and syscall is
// variadic, which Swift cannot call.
static inline int kindly_fuzz_memfd(const char *name) {
    return (int)syscall(SYS_memfd_create, name, 0u);
}
