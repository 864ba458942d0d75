# The allowed dependencies between devplace's libraries (docs/architecture.md states the same table). Each library
# may link only the libraries listed for it; devplace_check_dependencies() fails the configure step when a
# target_link_libraries line adds any other devplace library, so a back-edge cannot land unnoticed.
set(DEVPLACE_ALLOWED_devplace_core "")
set(DEVPLACE_ALLOWED_devplace_datasets devplace_core)
set(DEVPLACE_ALLOWED_devplace_sim devplace_core)
set(DEVPLACE_ALLOWED_devplace_env devplace_core devplace_sim)
set(DEVPLACE_ALLOWED_devplace_gnn devplace_core)
set(DEVPLACE_ALLOWED_devplace_distributed devplace_core)
set(DEVPLACE_ALLOWED_devplace_config devplace_core devplace_datasets devplace_sim devplace_env)
set(DEVPLACE_ALLOWED_devplace_agents devplace_core devplace_sim devplace_env)
set(DEVPLACE_ALLOWED_devplace_learn
    devplace_core devplace_datasets devplace_sim devplace_env devplace_gnn devplace_distributed devplace_config
    devplace_agents)
set(DEVPLACE_ALLOWED_devplace_exec devplace_core devplace_distributed)
set(DEVPLACE_ALLOWED_devplace_workflows
    devplace_core devplace_datasets devplace_sim devplace_env devplace_distributed devplace_config devplace_agents
    devplace_learn devplace_exec)

function(devplace_check_dependencies)
  foreach(lib core datasets sim env gnn distributed config agents learn exec workflows)
    set(target devplace_${lib})
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(links ${target} LINK_LIBRARIES)
    get_target_property(interface_links ${target} INTERFACE_LINK_LIBRARIES)
    foreach(dep IN LISTS links interface_links)
      if(dep MATCHES "^devplace_" AND NOT dep IN_LIST DEVPLACE_ALLOWED_${target})
        message(FATAL_ERROR "${target} links ${dep}, which docs/architecture.md does not allow "
                            "(allowed: ${DEVPLACE_ALLOWED_${target}})")
      endif()
    endforeach()
  endforeach()
endfunction()
