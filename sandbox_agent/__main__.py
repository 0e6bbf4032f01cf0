from sandbox_agent.cli.main import main

main("python -m sandbox_agent")
