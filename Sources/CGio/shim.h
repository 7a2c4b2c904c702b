// GIO (GDBus), from Debian's libglib2.0-dev (pkg-config: gio-2.0).
#include <gio/gio.h>
