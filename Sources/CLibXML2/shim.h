#ifndef MIRROR_CLIBXML2_SHIM_H
#define MIRROR_CLIBXML2_SHIM_H
#include <libxml/xmlreader.h>
#include <libxml/parser.h>
#endif
