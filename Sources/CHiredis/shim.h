// hiredis, from Debian's libhiredis-dev (its header is on the compiler's default path).
#include <hiredis/hiredis.h>
