/* routes.c - (being written) */
typedef int relay__unit_routes;
