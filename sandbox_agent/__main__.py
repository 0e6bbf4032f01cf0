from sandbox_agent.cli.app import app

app()
