from extracteval.cli import console

console()
