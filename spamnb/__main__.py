from spamnb.cli import main

main()
