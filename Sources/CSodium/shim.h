// libsodium, from Debian's libsodium-dev (pkg-config: libsodium).
#include <sodium.h>
