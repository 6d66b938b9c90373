// GraphiQL on /graphiql, started from a file (the pages' CSP allows no inline script).
// Same-origin /graphql: the single server's API, or the federation gateway in front of this page.
const fetcher = GraphiQL.createFetcher({ url: new URL("/graphql", location.href).href });
const defaultQuery = "# KernelIndex: every operation and the #1 of each of its comparison groups\n{ definitions { name comparisonGroups { title leader { title primaryMeasurement { display } } } } }\n";
// ?query= (e.g. the run page's "add a note" link) opens that document; otherwise the default.
const query = new URLSearchParams(location.search).get("query") || undefined;
const defaultHeaders = query && query.includes("mutation") ? '{"Authorization": "Bearer <your API key>"}' : undefined;
ReactDOM.createRoot(document.getElementById("graphiql")).render(React.createElement(GraphiQL, { fetcher, defaultQuery, query, defaultHeaders }));
