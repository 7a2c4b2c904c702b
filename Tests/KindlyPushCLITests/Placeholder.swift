// The CLI tests land with the CLI (on the lead's branch); SwiftPM needs this target to have a source file until then.
