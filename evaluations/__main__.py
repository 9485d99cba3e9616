from evaluations.cli.root import main

main()
