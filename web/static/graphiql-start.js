// GraphiQL on /graphiql, started from a file (the pages' CSP allows no inline script).
// Same-origin /graphql: the single server's API, or the federation gateway in front of this page.
const fetcher = GraphiQL.createFetcher({ url: new URL("/graphql", location.href).href });
const defaultQuery =
  "# KernelIndex: operations (a page of 20; the next with after: endCursor) and the #1 of each of their comparison groups\n" +
  "{ searchDefinitions(first: 20) { totalCount pageInfo { hasNextPage endCursor }\n" +
  "    nodes { name comparisonGroups { title leader { title primaryMeasurement { display } } } } } }\n";
// ?query= (e.g. the run page's "add a note" link) opens that document; otherwise the default.
const query = new URLSearchParams(location.search).get("query") || undefined;
const defaultHeaders = query && query.includes("mutation") ? '{"Authorization": "Bearer <your API key>"}' : undefined;
ReactDOM.createRoot(document.getElementById("graphiql")).render(React.createElement(GraphiQL, { fetcher, defaultQuery, query, defaultHeaders }));
