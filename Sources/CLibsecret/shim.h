// libsecret, the freedesktop Secret Service client, from Debian's libsecret-1-dev (pkg-config: libsecret-1).
#include <libsecret/secret.h>
