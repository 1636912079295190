/* cmd_node.c - (being written) */
typedef int relay__unit_cmd_node;
