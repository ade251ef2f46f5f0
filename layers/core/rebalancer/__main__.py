from rebalancer.cli import main

main()
