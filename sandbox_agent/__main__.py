from sandbox_agent.cli import app

app()
