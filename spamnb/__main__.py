from spamnb.entry import main

main()
