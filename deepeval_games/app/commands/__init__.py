"""The command line: the parser, each command's handler, and the generated reference pages."""
