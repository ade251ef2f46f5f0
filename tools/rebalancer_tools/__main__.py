from rebalancer_tools.cli import main

main()
