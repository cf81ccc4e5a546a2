from trident_local.cli import main

main()
