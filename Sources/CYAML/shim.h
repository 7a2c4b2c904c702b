// libyaml (Debian libyaml-dev): the YAML 1.1 parser that reads `send --config`'s file.
#include <yaml.h>
