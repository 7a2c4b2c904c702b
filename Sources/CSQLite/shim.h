// SQLite, from Debian's libsqlite3-dev (pkg-config: sqlite3).
#include <sqlite3.h>
