"""What pyproject.toml cannot say: the bundled data (data/) ships as the package `kernelindex_data`.

`packages.find` cannot give a folder another name, and a top-level package called `data` would
collide with every other project's; so the package list is found here and data/ is mapped to
`kernelindex_data` (server/bootstrap.py finds it through that name, in a wheel and in a checkout).
What of data/ ships is `package-data` in pyproject.toml: the files `serve` imports, nothing else.
"""

from setuptools import find_namespace_packages, setup

PACKAGES = ["registry", "store", "loaders", "resolvers", "gateway", "server", "web", "cli", "client", "kernels", "mcp_server"]

setup(
    packages=find_namespace_packages(
        include=[name for package in PACKAGES for name in (package, f"{package}.*")],
        # A checkout after `make setup` holds npm trees (gateway/, web/assets/): never packages.
        exclude=["*.node_modules", "*.node_modules.*"],
    )
    # Its folders that are importable names are listed too (else setuptools warns on every build).
    + ["kernelindex_data"]
    + [
        f"kernelindex_data.{name}" for name in find_namespace_packages(where="data") if all(part.isidentifier() for part in name.split("."))
    ],
    package_dir={"kernelindex_data": "data"},
)
